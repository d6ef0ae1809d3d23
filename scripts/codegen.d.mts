/** Types of scripts/codegen.mjs for the TypeScript tests that import it. */
export declare const root: string;
/** Every generated file's path (relative to `base`) and text, generated in memory. */
export declare function generate(base?: string): Promise<Map<string, string>>;
/** Paths whose file on disk differs from what generate() produces. */
export declare function staleFiles(base?: string): Promise<string[]>;
/** The rollout kinds' UI documents, `src/kinds/<kind>/ui/*.graphql`, in path order. */
export declare function kindUiDocuments(base?: string): string[];
/** Every document file the generated clients are built from (relative to `base`). */
export declare function documentFiles(base?: string): string[];
