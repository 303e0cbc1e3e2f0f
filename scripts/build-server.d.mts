/** Types of build-server.mjs (a plain script so that it runs without a TypeScript loader). */
export declare const SERVER_BUNDLE: string;
export declare function buildServer(): Promise<string>;
export declare function serverBundleIsStale(): boolean;
export declare function startNodeFlags(): string[];
export declare const CLI_BUNDLE: string;
