/* placeholder: being written */
typedef int hakoi_placeholder_msg_registry;
