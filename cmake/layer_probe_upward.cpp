// Compiled by the test LayerRules.ModelCannotIncludeTrain with the model
// layer's include roots: model/ sits below train/, so this must not compile.
#include "vit/train/trainer.hpp"
