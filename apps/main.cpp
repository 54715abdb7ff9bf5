// kbench: is each GPU kernel right, how fast is it, and how close to what the hardware can do.
// main wires the subcommands and maps exceptions to exit codes:
// 0 ok, 1 check failed / regression, 2 bad usage or input, 3 runtime failure.
#include <iostream>

#include "apps/commands.h"
#include "harness/errors.h"
#include "harness/registry.h"
#include "harness/version.h"

namespace {

// CLI11 reports a mistyped subcommand as "a subcommand is required"; name it instead.
void reject_unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return;
  std::string valid;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == argv[1]) return;
    valid += (valid.empty() ? "" : ", ") + sub->get_name();
  }
  throw kbench::UsageError("unknown command '" + std::string(argv[1]) + "' (valid: " + valid + ")");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kbench;
  CLI::App app{"kbench: checks GPU kernels against float64 references and times them against "
               "the GPU's measured speed of light"};
  app.set_version_flag("--version", std::string(kVersion));
  app.require_subcommand(1);
  int exit_code = kExitOk;
  app::setup_list(app, exit_code);
  app::setup_devices(app, exit_code);
  app::setup_calibrate(app, exit_code);
  app::setup_run(app, exit_code);
  app::setup_check(app, exit_code);
  app::setup_compare(app, exit_code);
  app::setup_plot(app, exit_code);
  try {
    Registry::instance().validate();
    reject_unknown_subcommand(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help or the parse error
    return rc == 0 ? kExitOk : kExitUsage;
  } catch (const UsageError& e) {
    std::cerr << "kbench: " << e.what() << "\n";
    return kExitUsage;
  } catch (const RuntimeFailure& e) {
    std::cerr << "kbench: " << e.what() << "\n";
    return kExitRuntime;
  } catch (const std::exception& e) {
    std::cerr << "kbench: internal error: " << e.what() << "\n";
    return kExitRuntime;
  }
  return exit_code;
}
