import { Argument, Command, Help, type Option } from 'commander';

/** One command of the tree as completion sees it: what may follow it. */
interface Node {
  /** Canonical words after the program name ('' for the program itself). */
  path: string;
  /** The words that reach this node from its parent: its name and aliases. */
  names: string[];
  parent: string | null;
  description: string;
  subcommands: { name: string; description: string }[];
  options: { flags: string[]; long?: string; short?: string; takesValue: boolean; description: string }[];
}

const help = new Help();

/** The visible commands and options, walked from the commander tree, so new commands are included automatically. */
function nodes(root: Command): Node[] {
  const out: Node[] = [];
  const walk = (cmd: Command, path: string, parent: string | null) => {
    const subs = help.visibleCommands(cmd);
    out.push({
      path,
      names: [cmd.name(), ...cmd.aliases()],
      parent,
      description: cmd.description(),
      subcommands: subs.flatMap((s) => [s.name(), ...s.aliases()].map((name) => ({ name, description: s.description() }))),
      options: help.visibleOptions(cmd).map((o: Option) => ({
        flags: [o.long, o.short].filter((f): f is string => Boolean(f)),
        long: o.long?.replace(/^--/, ''),
        short: o.short?.replace(/^-/, ''),
        takesValue: o.required || o.optional,
        description: o.description,
      })),
    });
    for (const sub of subs) if (sub.name() !== 'help') walk(sub, path ? `${path} ${sub.name()}` : sub.name(), path);
  };
  walk(root, '', null);
  return out;
}

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const join = (parent: string, word: string) => (parent ? `${parent} ${word}` : word);

/**
 * bash and zsh: the loop over the words before the cursor that finds the command being completed
 * (its canonical path, aliases included), skipping options and values that name no command.
 */
function pathLoop(all: Node[], v: { path: string; first: number; last: string; word: string }): string {
  const arms = all
    .filter((n) => n.parent !== null)
    .flatMap((n) => n.names.map((name) => `      ${sq(join(n.parent!, name))}) ${v.path}=${sq(n.path)} ;;`))
    .join('\n');
  return `  for ((i = ${v.first}; i < ${v.last}; i++)); do
    w="\${${v.word}}"
    [[ "$w" == -* ]] && continue
    case "\${${v.path}:+$${v.path} }$w" in
${arms}
    esac
  done`;
}

function bash(root: Command, all: Node[]): string {
  const name = root.name();
  const globals = all[0]!.options.flatMap((o) => o.flags);
  const arms = all
    .map((n) => {
      const words = [...n.subcommands.map((s) => s.name), ...n.options.flatMap((o) => o.flags), ...(n.path ? globals : [])];
      return `    ${sq(n.path)}) words=${sq([...new Set(words)].join(' '))} ;;`;
    })
    .join('\n');
  return `# ${name} completion for bash: eval "$(${name} completion bash)", or save it as /etc/bash_completion.d/${name}
_${name}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" w="" words="" i
${pathLoop(all, { path: 'path', first: 1, last: 'COMP_CWORD', word: 'COMP_WORDS[i]' })}
  case "$path" in
${arms}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _${name} ${name}
`;
}

function zsh(root: Command, all: Node[]): string {
  const name = root.name();
  const item = (word: string, description: string) => sq(`${word.replace(/:/g, '\\:')}:${description}`);
  const globals = all[0]!.options.flatMap((o) => o.flags.map((f) => item(f, o.description)));
  const arms = all
    .map((n) => {
      const cmds = n.subcommands.map((s) => item(s.name, s.description));
      const opts = [...n.options.flatMap((o) => o.flags.map((f) => item(f, o.description))), ...(n.path ? globals : [])];
      return `    ${sq(n.path)})\n      cmds=(${cmds.join(' ')})\n      opts=(${[...new Set(opts)].join(' ')}) ;;`;
    })
    .join('\n');
  // `path` is zsh's own array tied to PATH, hence path_.
  return `#compdef ${name}
# ${name} completion for zsh: source <(${name} completion zsh), or save it as _${name} in a directory of $fpath
_${name}() {
  local -a cmds opts
  local path_="" w="" i
${pathLoop(all, { path: 'path_', first: 2, last: 'CURRENT', word: 'words[i]' })}
  case "$path_" in
${arms}
  esac
  if [[ "\${words[CURRENT]}" == -* ]]; then
    _describe -t options 'option' opts
  elif (( \${#cmds} )); then
    _describe -t commands 'command' cmds
  else
    _files
  fi
}
compdef _${name} ${name}
`;
}

function fish(root: Command, all: Node[]): string {
  const name = root.name();
  const fn = `__${name}_path`;
  const lines = [
    `# ${name} completion for fish: ${name} completion fish > ~/.config/fish/completions/${name}.fish`,
    `function ${fn}`,
    `    set -l path ''`,
    `    set -l tokens (commandline -opc)`,
    `    set -e tokens[1]`,
    `    for w in $tokens`,
    `        string match -q -- '-*' $w; and continue`,
    `        switch (string trim -- "$path $w")`,
    ...all
      .filter((n) => n.parent !== null)
      .flatMap((n) => n.names.map((word) => `            case ${sq(join(n.parent!, word))}\n                set path ${sq(n.path)}`)),
    `        end`,
    `    end`,
    `    echo $path`,
    `end`,
    `function ${fn}_is`,
    `    set -l current (${fn})`,
    `    test "$current" = "$argv[1]"`,
    `end`,
    `complete -c ${name} -f`,
  ];
  const option = (o: Node['options'][number], condition: string) =>
    `complete -c ${name}${condition}${o.long ? ` -l ${o.long}` : ''}${o.short ? ` -s ${o.short}` : ''}${o.takesValue ? ' -r' : ''} -d ${sq(o.description)}`;
  for (const o of all[0]!.options) lines.push(option(o, ''));
  for (const n of all) {
    const when = ` -n ${sq(`${fn}_is ${sq(n.path)}`)}`;
    for (const s of n.subcommands) lines.push(`complete -c ${name}${when} -a ${sq(s.name)} -d ${sq(s.description)}`);
    if (n.path) for (const o of n.options) lines.push(option(o, when));
  }
  return `${lines.join('\n')}\n`;
}

const SHELLS = { bash, zsh, fish } as const;

/** `rbrowse completion bash|zsh|fish`: a script generated from the commander tree. */
export function completionCommand(root: Command): Command {
  return new Command('completion')
    .description('print a shell completion script (generated from the commands, so it knows them all)')
    .addArgument(new Argument('<shell>', 'the shell to complete in').choices(Object.keys(SHELLS)))
    .addHelpText(
      'after',
      '\nExamples:\n  eval "$(rbrowse completion bash)"           # in ~/.bashrc\n  source <(rbrowse completion zsh)            # in ~/.zshrc\n  rbrowse completion fish > ~/.config/fish/completions/rbrowse.fish',
    )
    .action((shell: keyof typeof SHELLS) => {
      process.stdout.write(SHELLS[shell](root, nodes(root)));
    });
}
