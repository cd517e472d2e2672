/**
 * The README's code blocks, as test/integration/readme.test.ts runs them. A block is read with
 * the HTML comment just above its fence, which only the test sees:
 *
 *   <!-- readme-test: skip (why) -->        not run (it starts a server, say)
 *   <!-- readme-test: sdk -->               run only where the Cycles SDK can be installed
 *   <!-- readme-test: sdk file demo.mts --> not a command: the file the next sdk block runs
 *
 * Every other `sh` block is run, in order, in one shell, as a reader pastes them.
 */
export interface ReadmeBlock {
  readonly lang: string;
  readonly code: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** What the comment above the fence says, after `readme-test:`. */
  readonly marker?: string;
}

export function readmeBlocks(text: string): ReadmeBlock[] {
  const lines = text.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(```|~~~)\s*([\w-]*)/.exec(lines[i] ?? '');
    if (!open) continue;
    const fence = open[1] ?? '```';
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !(lines[i] ?? '').startsWith(fence); i++)
      body.push(lines[i] ?? '');
    let above = start - 1;
    while (above >= 0 && (lines[above] ?? '').trim() === '') above--;
    const marker = /^<!--\s*readme-test:\s*(.*?)\s*-->$/.exec((lines[above] ?? '').trim())?.[1];
    blocks.push({
      lang: open[2] ?? '',
      code: body.join('\n'),
      line: start + 1,
      ...(marker !== undefined && { marker }),
    });
  }
  return blocks;
}

export interface ReadmeScript {
  /** One bash script: every block to run, each announced on stdout and stderr by its line. */
  readonly script: string;
  /** The lines of the blocks run, and of those left out with why. */
  readonly run: readonly number[];
  readonly left: readonly { readonly line: number; readonly why: string }[];
}

/**
 * The blocks a reader runs, as one script: `sh` blocks unmarked, and with `sdk` the SDK's (its
 * files written where the reader would save them). `-e` and `pipefail`: a failing step fails
 * the script at that block.
 */
export function readmeScript(
  blocks: readonly ReadmeBlock[],
  { sdk }: { sdk: boolean },
): ReadmeScript {
  const parts = ['set -eo pipefail'];
  const run: number[] = [];
  const left: { line: number; why: string }[] = [];
  for (const block of blocks) {
    const marker = block.marker ?? '';
    const file = /^sdk file (\S+)$/.exec(marker)?.[1];
    if (marker.startsWith('skip')) {
      left.push({ line: block.line, why: marker });
    } else if (marker.startsWith('sdk') && !sdk) {
      left.push({ line: block.line, why: 'the Cycles SDK, runcycles, is not installable here' });
    } else if (file) {
      run.push(block.line);
      parts.push(`cat > ${file} <<'README_FILE_END'\n${block.code}\nREADME_FILE_END`);
    } else if (block.lang === 'sh' || block.lang === 'bash') {
      run.push(block.line);
      const banner = `== README.md block at line ${block.line}`;
      parts.push(`echo '${banner}'; echo '${banner}' >&2\n${block.code}`);
    }
  }
  return { script: `${parts.join('\n')}\n`, run, left };
}

/** SPEC's error bodies among the lines a script printed: an answer that was a refusal. */
export const errorBodies = (stdout: string): string[] =>
  stdout
    .split('\n')
    .filter((line) => /"error":"[A-Z_]+"/.test(line) && /"request_id":"/.test(line));
