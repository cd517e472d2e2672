import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The repository's Markdown as a reader of a fresh clone meets it: every relative link names a
 * file or folder of the repository (never one beside it, like the workplace's ../shared), every
 * #anchor a heading of the file it points into, and every other link is a public https URL (or
 * the local servers of `npm start`). Headings name what they are about, not tracker numbers.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const SKIP = new Set(['node_modules', '.git', '.data', 'cdk.out', 'dist', 'coverage']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The text outside fenced code blocks and inline code: where links are links. */
const prose = (text: string) =>
  text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');

/** Link targets: [text](target "title"), ![alt](target), <https://…> autolinks. */
function linksOf(text: string): string[] {
  const body = prose(text);
  const inline = [...body.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)];
  const auto = [...body.matchAll(/<(https?:\/\/[^>\s]+)>/g)];
  const reference = [...body.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)];
  return [...inline, ...auto, ...reference].map((m) => m[1] ?? '');
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const withoutCode = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading = ''] of withoutCode.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

const files = markdownFiles(root);
const name = (file: string) => relative(root, file).split(sep).join('/');

describe('the repository’s Markdown', () => {
  it('is found', () => {
    expect(files.map(name)).toEqual(expect.arrayContaining(['README.md', 'docs/decisions.md']));
  });

  it.each(files.map((f) => [name(f), f]))('%s: every link resolves', (_, file) => {
    const text = readFileSync(file, 'utf8');
    const broken: string[] = [];
    for (const link of linksOf(text)) {
      if (/^https:\/\//.test(link) || /^http:\/\/(localhost|127\.0\.0\.1)[:/]/.test(link)) continue;
      if (/^(mailto:|[a-z][a-z0-9+.-]*:)/i.test(link)) {
        broken.push(`${link}: not a public https URL`);
        continue;
      }
      const [path = '', anchor] = link.split('#', 2);
      const target = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
      if (target !== root.replace(/\/$/, '') && !target.startsWith(root)) {
        broken.push(`${link}: outside the repository`);
        continue;
      }
      if (!existsSync(target)) {
        broken.push(`${link}: no such file`);
        continue;
      }
      if (anchor !== undefined && statSync(target).isFile() && target.endsWith('.md')) {
        if (!anchorsOf(readFileSync(target, 'utf8')).has(anchor)) {
          broken.push(`${link}: no heading #${anchor} in ${name(target)}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it.each(files.map((f) => [name(f), f]))(
    '%s: names nothing beside the repository and no tracker number in a heading',
    (_, file) => {
      const text = readFileSync(file, 'utf8');
      expect(text.match(/\.\.\/shared\/[^\s`)]*/g) ?? []).toEqual([]);
      const headings = [...text.matchAll(/^#{1,6}\s+.*$/gm)].map((m) => m[0]);
      expect(headings.filter((h) => /\bissues?\s+#?\d+|\(#\d+\)/i.test(h))).toEqual([]);
    },
  );
});

describe('the checks themselves', () => {
  it('find links outside code, and GitHub’s anchors', () => {
    expect(
      linksOf('[a](docs/x.md#y) `[b](no.md)` <https://e.org/p> ![i](img.png)\n```\n[c](no)\n```'),
    ).toEqual(['docs/x.md#y', 'img.png', 'https://e.org/p']);
    expect([
      ...anchorsOf(
        '## Operate it from a terminal: the CLI\n## Ledger math — see `x.md`\n## A\n## A',
      ),
    ]).toEqual(['operate-it-from-a-terminal-the-cli', 'ledger-math--see-xmd', 'a', 'a-1']);
  });
});
