#include "src/base/status.h"
