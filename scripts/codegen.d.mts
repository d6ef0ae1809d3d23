/** Types of scripts/codegen.mjs for the TypeScript tests that import it. */
export declare const root: string;
/** Every generated file's path (relative to `base`) and text, generated in memory. */
export declare function generate(base?: string): Promise<Map<string, string>>;
/** Paths whose file on disk differs from what generate() produces. */
export declare function staleFiles(base?: string): Promise<string[]>;
