// The MoA core: shape ρ, index generation ι, layouts γ, views, ψ and rav.
#pragma once

#include "reference/moa/layout.hpp"
#include "reference/moa/shape.hpp"
#include "reference/moa/view.hpp"
