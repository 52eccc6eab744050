// Declarations of the kernel functions that the selected operators call, written by
// ExecuTorch's codegen through executorch_espnn.selective; do not edit.
#pragma once

${headers}

${nativeFunctions_declarations}
