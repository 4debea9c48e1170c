#include "CContrailSystem.h"
