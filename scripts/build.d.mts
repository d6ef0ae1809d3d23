/** Types of scripts/build.mjs for the TypeScript tests that import it. */
export declare const root: string;
export declare const BUILD_INFO: string;
export declare function inputsDigest(base?: string): string;
export declare function readBuildInfo(base?: string): { version: string; revision: string; inputs: string } | undefined;
export declare function staleReason(base?: string): string | undefined;
export declare function recordBuild(base?: string): { version: string; revision: string; inputs: string };
