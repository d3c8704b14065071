/* The bridge runtime: not built yet. */
#include "hako/bridge.h"
