/** Types of build-desktop.mjs (a plain script so that it runs without a TypeScript loader). */
export declare const OUT: string;
export declare function buildDesktop(options?: { withConsole?: boolean; quiet?: boolean }): Promise<string>;
