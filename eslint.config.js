// ESLint flat config: type-aware typescript-eslint over every TypeScript tree the root tsconfig
// includes (src, adapters, bin, scripts, test, bench), so a dropped or misused promise fails
// `npm run lint` instead of leaking a stream at run time.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'native/', 'bench/node_modules/', 'bench/results/', 'test-results/', 'src/gateway/ui/client.gen.ts'] },
  {
    files: ['**/*.ts', '**/*.js'],
    extends: [tseslint.configs.recommended],
    languageOptions: {
      parserOptions: {
        // NOTE: the root tsconfig covers every .ts tree (bench's too: its one extra package,
        // node-llama-cpp, is imported dynamically behind local types); the files outside it
        // (bin/, test/doubles' entry script, the two configs) get the default project.
        projectService: { allowDefaultProject: ['bin/*.js', 'test/doubles/*.js', 'bench/serve-path/*.js', 'eslint.config.js', 'vitest.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // The house convention: a leading underscore marks a binding kept for its position or to leave
      // it out of a rest object (`const { dropped: _x, ...rest } = o`).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
);
