/* placeholder: being written */
typedef int hakoi_placeholder_pdu_codec;
