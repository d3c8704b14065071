/* Hakoniwa programs include <hako_simevent.h>; hako keeps its headers under hako/. */
#include "hako/hako_simevent.h"
