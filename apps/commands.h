// Each subcommand lives in its own file with an options struct and a setup_X(CLI::App&, int&)
// that binds options and sets the callback; the callback stores the command's exit code.
#pragma once
#include <CLI/CLI.hpp>

namespace kbench::app {

void setup_list(CLI::App& app, int& exit_code);
void setup_devices(CLI::App& app, int& exit_code);
void setup_calibrate(CLI::App& app, int& exit_code);
void setup_run(CLI::App& app, int& exit_code);    // kbench run: check + time
void setup_check(CLI::App& app, int& exit_code);  // kbench check: correctness only
void setup_compare(CLI::App& app, int& exit_code);  // kbench compare: the CI regression gate
void setup_plot(CLI::App& app, int& exit_code);     // kbench plot: results CSVs -> SVG chart

}  // namespace kbench::app
