import { commandModules } from "./command-modules.ts";
import { runCli } from "./program.ts";
import { abortOnStopSignals } from "./stop-signals.ts";

process.exitCode = await runCli({
  argv: process.argv,
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  modules: commandModules,
  signal: abortOnStopSignals(process),
});
