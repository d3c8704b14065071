/* Hakoniwa programs include <hako_asset.h>; hako keeps its headers under hako/. */
#include "hako/hako_asset.h"
