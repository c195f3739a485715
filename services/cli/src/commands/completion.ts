import { Argument } from "commander";
import type { RegisterCommands } from "../cli-context.ts";
import { COMPLETION_SHELLS, type CompletionShell, completionScript } from "../completion-script.ts";

/** `subdata completion bash|zsh`: prints the shell's completion script (commands, subcommands, options); with --json, inside a document like every result. */
export const registerCompletionCommand: RegisterCommands = (program, context) => {
  program
    .command("completion")
    .description("print a shell completion script: source <(subdata completion bash), or zsh")
    .addArgument(new Argument("<shell>", "the shell").choices(COMPLETION_SHELLS))
    .action((shell: CompletionShell) => {
      const script = completionScript(program, shell);
      context.output.result({ shell, script }, script);
    });
};
