"""Reading a quantized FX graph: operator names and arguments (``names``), quantization
parameters (``qdq``), constants and weights (``constants``) and where a node comes from in
the user's code (``source``).

Works on both the ATen program ``ops_to_not_decompose`` sees and the edge program the
partitioner and ``preprocess`` see: targets are compared by their canonical name
("aten.linear.default"), whatever dialect object carries them.  Nothing here knows about
operator lowerings or payloads; those layers import this one, never the reverse.
"""
