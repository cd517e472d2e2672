/** Stylesheets are bundled by esbuild (infra/build-console.ts) into assets/main-<hash>.css. */
declare module '*.css';
