import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * Bundles the operator console (console/src, Preact) into `outdir`: index.html plus
 * content-hashed assets/main-<hash>.js and .css, with their source maps. Run by `npm start`
 * (into console/dist), `npm run build`, the browser tests (a folder of their own) and every CDK
 * synth (into the console function's asset). Offline, about a second.
 *
 *   node --import tsx infra/build-console.ts [--outdir <dir>]
 */
export const consoleRoot = fileURLToPath(new URL('../console/', import.meta.url));
export const consoleDist = join(consoleRoot, 'dist');

export interface ConsoleBuild {
  readonly outdir: string;
  /** Bytes of the script and the stylesheet (minified, uncompressed). */
  readonly bytes: { readonly js: number; readonly css: number };
}

/**
 * Builds into a folder of its own, then puts it in place of `outdir`: processes starting at the
 * same time (tests spawn several `npm start`s) never see, or leave, half a build.
 */
export async function buildConsole(outdir: string = consoleDist): Promise<ConsoleBuild> {
  const staging = `${outdir}.${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const bytes = await buildInto(staging);
    await rm(outdir, { recursive: true, force: true });
    await rename(staging, outdir).catch((error: NodeJS.ErrnoException) => {
      // Another process put its build (the same one) in place first.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
    return { outdir, bytes };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** `npm start`: builds console/dist unless it is newer than everything it is built from. */
export async function ensureConsole(outdir: string = consoleDist): Promise<'built' | 'fresh'> {
  const built = await stat(join(outdir, 'index.html')).catch(() => undefined);
  // The console's own sources and the typed client it is built with (client/).
  const clientRoot = fileURLToPath(new URL('../client/', import.meta.url));
  const sources = [
    ...(await readdir(join(consoleRoot, 'src'), { recursive: true })).map((f) =>
      join(consoleRoot, 'src', f),
    ),
    ...(await readdir(clientRoot, { recursive: true })).map((f) => join(clientRoot, f)),
    fileURLToPath(import.meta.url),
    fileURLToPath(new URL('../package-lock.json', import.meta.url)),
  ];
  const newest = Math.max(
    ...(await Promise.all(sources.map(async (f) => (await stat(f)).mtimeMs))),
  );
  if (built && built.mtimeMs >= newest) return 'fresh';
  await buildConsole(outdir);
  return 'built';
}

async function buildInto(outdir: string): Promise<ConsoleBuild['bytes']> {
  await mkdir(outdir, { recursive: true });
  const result = await build({
    entryPoints: [join(consoleRoot, 'src', 'main.tsx')],
    outdir: join(outdir, 'assets'),
    entryNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    // Evergreen browsers; what Debian's Chromium and the current Firefox, Safari and Edge run.
    target: ['es2022', 'chrome120', 'firefox120', 'safari17'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    legalComments: 'eof',
    logLevel: 'warning',
  });
  const outputs = Object.entries(result.metafile.outputs);
  const find = (ext: string) => {
    const found = outputs.find(([file]) => file.endsWith(ext));
    if (!found) throw new Error(`the console build made no ${ext} file`);
    return { name: basename(found[0]), bytes: found[1].bytes };
  };
  const js = find('.js');
  const css = find('.css');
  await writeFile(join(outdir, 'index.html'), indexHtml(js.name, css.name));
  return { js: js.bytes, css: css.bytes };
}

/**
 * The page at /console. Asset URLs are relative to it (console/assets/…), so the console works
 * wherever the admin API is mounted (a custom domain's `admin` base path included). Nothing
 * inline: the Content-Security-Policy allows scripts and styles from files only.
 */
function indexHtml(script: string, stylesheet: string): string {
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta name="referrer" content="no-referrer">
    <title>Budget console</title>
    <link rel="icon" href="data:,">
    <link rel="stylesheet" href="console/assets/${stylesheet}">
    <script type="module" src="console/assets/${script}"></script>
  </head>
  <body>
    <div id="app"></div>
    <noscript>The budget console needs JavaScript.</noscript>
  </body>
</html>
`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--outdir');
  const outdir = at > 0 ? process.argv[at + 1] : undefined;
  const built = await buildConsole(outdir ? resolve(outdir) : undefined);
  console.log(
    `console built in ${built.outdir}: ${(built.bytes.js / 1000).toFixed(1)} kB script, ${(built.bytes.css / 1000).toFixed(1)} kB stylesheet`,
  );
}
