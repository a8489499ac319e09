#include "config.h"
#include "plugin.h"
