/* Hakoniwa programs include <hako_asset_service.h>; hako keeps its headers under hako/. */
#include "hako/hako_asset_service.h"
