#include "src/options.hpp"
