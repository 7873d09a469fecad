// Compiled by the test LayerRules.ModelSeesTheLayersBelowIt with the model
// layer's include roots: the base layer is below model/, so this compiles.
#include "vit/error.hpp"
