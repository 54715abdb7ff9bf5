#pragma once

#ifndef KBENCH_VERSION
#define KBENCH_VERSION "0.0.0-dev"  // CMake defines the real one from project(VERSION)
#endif

namespace kbench {
inline constexpr const char* kVersion = KBENCH_VERSION;
}
