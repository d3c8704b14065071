/* Hakoniwa programs include <hako_conductor.h>; hako keeps its headers under hako/. */
#include "hako/hako_conductor.h"
