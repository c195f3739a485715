import type { Command, Option } from "commander";

export const COMPLETION_SHELLS = ["bash", "zsh"] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

interface Word {
  name: string;
  description: string;
}

/** One command path ("" for the program itself, "charges set-status" for a subcommand) and what may follow it. */
interface Node {
  path: string;
  commands: Word[];
  options: Word[];
  /** Options that take a value, with the values they accept (empty: anything, so nothing to offer). */
  valueOptions: Map<string, readonly string[]>;
}

function optionNames(option: Option): string[] {
  return [option.long, option.short].filter((name): name is string => name !== undefined);
}

/** Every visible command path of the program, depth first; the program's own options (--json) apply to all of them. */
function collectNodes(program: Command): Node[] {
  const globalOptions = program.options.filter((option) => option.long !== "--version");
  const nodes: Node[] = [];
  const visit = (command: Command, path: string) => {
    const help = command.createHelp();
    const options = [...help.visibleOptions(command), ...(command === program ? [] : globalOptions)];
    const valueOptions = new Map<string, readonly string[]>();
    for (const option of options) {
      if (option.required || option.optional) for (const name of optionNames(option)) valueOptions.set(name, option.argChoices ?? []);
    }
    const subcommands = help.visibleCommands(command);
    // An argument with a fixed set of values (completion's shell) is offered like a subcommand.
    const choices = command.registeredArguments.flatMap((argument) => (argument.argChoices ?? []).map((name) => ({ name, description: argument.description })));
    nodes.push({
      path,
      commands: [...subcommands.map((sub) => ({ name: sub.name(), description: sub.description() })), ...choices],
      options: options.flatMap((option) => optionNames(option).map((name) => ({ name, description: option.description }))),
      valueOptions,
    });
    for (const sub of subcommands) {
      // commander's implicit `help [command]` has no subcommands or options worth a node of its own.
      if (sub.name() !== "help" || sub.options.length > 0) visit(sub, path === "" ? sub.name() : `${path} ${sub.name()}`);
    }
  };
  visit(program, "");
  return nodes;
}

/** A single-quoted shell word: the same in bash and zsh. */
function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** Descriptions are one line in a menu; commander's may hold newlines or ellipses, both fine once flattened. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** The shared first half: find the deepest known command path among the words before the cursor. */
function pathCases(nodes: Node[]): string {
  return nodes
    .filter((node) => node.path !== "")
    .map((node) => quote(node.path))
    .join("|");
}

function bashScript(name: string, nodes: Node[]): string {
  const fn = `_${name.replace(/[^A-Za-z0-9_]/g, "_")}`;
  const wordCases = nodes
    .map(
      (node) =>
        `    ${quote(node.path)}) commands=${quote(node.commands.map((word) => word.name).join(" "))}; options=${quote(node.options.map((word) => word.name).join(" "))} ;;`,
    )
    .join("\n");
  const valueCases = nodes
    .flatMap((node) =>
      [...node.valueOptions].map(([option, choices]) =>
        choices.length > 0
          ? `    ${quote(`${node.path}|${option}`)}) COMPREPLY=($(compgen -W ${quote(choices.join(" "))} -- "$cur")); return ;;`
          : `    ${quote(`${node.path}|${option}`)}) return ;;`,
      ),
    )
    .join("\n");
  return `# bash completion for ${name}. Load it in the current shell:
#   source <(${name} completion bash)
# or install it for every shell: ${name} completion bash > ~/.local/share/bash-completion/completions/${name}
${fn}() {
  local cur prev cmd word commands options i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev=""
  ((COMP_CWORD > 0)) && prev="\${COMP_WORDS[COMP_CWORD - 1]}"
  cmd=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    case "\${cmd:+$cmd }$word" in
    ${pathCases(nodes)}) cmd="\${cmd:+$cmd }$word" ;;
    esac
  done
  COMPREPLY=()
  # The value of an option: its choices, if it has any; otherwise nothing (an id, a URL, a number).
  case "$cmd|$prev" in
${valueCases}
  esac
  case "$cmd" in
${wordCases}
    *) commands=""; options="" ;;
  esac
  # Options when the word starts with a dash (or nothing else fits), subcommands otherwise.
  if [[ $cur == -* || -z $commands ]]; then
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$commands" -- "$cur"))
  fi
}
complete -F ${fn} ${name}
`;
}

function zshScript(name: string, nodes: Node[]): string {
  const fn = `_${name.replace(/[^A-Za-z0-9_]/g, "_")}`;
  // _describe reads "name:description"; a colon in the name itself is escaped.
  const entry = (word: Word) => quote(`${word.name.replaceAll(":", "\\:")}:${oneLine(word.description)}`);
  const wordCases = nodes
    .map((node) => `    (${quote(node.path)}) commands=(${node.commands.map(entry).join(" ")}); options=(${node.options.map(entry).join(" ")}) ;;`)
    .join("\n");
  const valueCases = nodes
    .flatMap((node) =>
      [...node.valueOptions].map(([option, choices]) =>
        choices.length > 0
          ? `    (${quote(`${node.path}|${option}`)}) compadd -- ${choices.map(quote).join(" ")}; return ;;`
          : `    (${quote(`${node.path}|${option}`)}) return 1 ;;`,
      ),
    )
    .join("\n");
  return `#compdef ${name}
# zsh completion for ${name}. Load it in the current shell (after compinit):
#   source <(${name} completion zsh)
# or install it for every shell: ${name} completion zsh > "\${fpath[1]}/_${name}"
${fn}() {
  local cmd="" word i
  local -a commands options
  for ((i = 2; i < CURRENT; i++)); do
    word=\${words[i]}
    case "\${cmd:+$cmd }$word" in
    (${pathCases(nodes)}) cmd="\${cmd:+$cmd }$word" ;;
    esac
  done
  # The value of an option: its choices, if it has any; otherwise nothing (an id, a URL, a number).
  case "$cmd|\${words[CURRENT - 1]}" in
${valueCases}
  esac
  case "$cmd" in
${wordCases}
  esac
  if [[ \${words[CURRENT]} == -* ]]; then
    _describe -t options 'option' options
  else
    _describe -t commands 'command' commands || _describe -t options 'option' options
  fi
}
if [[ \${zsh_eval_context[-1]} == loadautofunc ]]; then
  ${fn} "$@"
else
  compdef ${fn} ${name}
fi
`;
}

/** A completion script for the program's commands and options, built from the same tree commander parses. */
export function completionScript(program: Command, shell: CompletionShell): string {
  const nodes = collectNodes(program);
  return shell === "bash" ? bashScript(program.name(), nodes) : zshScript(program.name(), nodes);
}
