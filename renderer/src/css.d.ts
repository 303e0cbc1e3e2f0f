// The stylesheet is imported for its effect alone (Vite bundles it). TypeScript 7 checks that a
// side-effect import resolves to something (noUncheckedSideEffectImports): this says it does,
// without vite/client's other globals, which the console does not use.
declare module '*.css' {}
