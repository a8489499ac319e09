/* placeholder */
#include "config.h"
#include "pipeline.h"
