#include "algorithms/datatype.h"
