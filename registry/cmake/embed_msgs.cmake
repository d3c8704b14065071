# placeholder: writes an empty table until the real embedder lands
file(WRITE ${OUT} "/* generated: built-in .msg texts */\n#include <stddef.h>\nconst char *const hakoi_builtin_msgs[][3] = {{NULL, NULL, NULL}};\nconst size_t hakoi_builtin_msg_count = 0;\n")
