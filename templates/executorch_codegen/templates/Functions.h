// Static-dispatch entry points of the selected operators, written by ExecuTorch's codegen
// through executorch_espnn.selective; do not edit.  Not needed for registration.
#pragma once

${static_dispatch_extra_headers}

${Functions_declarations}
