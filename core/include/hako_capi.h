/* Hakoniwa programs include <hako_capi.h>; hako keeps its headers under hako/. */
#include "hako/hako_capi.h"
