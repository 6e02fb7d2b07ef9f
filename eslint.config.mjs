// Lint: typescript-eslint's type-checked rules (they catch what matters most in a crawl engine: a promise nobody
// awaits loses a page or an error silently), the house's size limits, and Prettier owning layout (no style rules
// here, eslint-config-prettier turns off the ones that would fight it).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      'dist/**',
      'out/**',
      'bench/**',
      'node_modules/**',
      '.cache/**',
      'test-artifacts/**',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // An `async` function that does not await still turns a synchronous throw into a rejection, which is what a
      // caller of a promise-returning hook expects; the rule's fix (`() => Promise.resolve(x)`) throws instead.
      '@typescript-eslint/require-await': 'off',
      // src/api/index.ts hands the declaration bundler the build's ambient module declarations by path.
      '@typescript-eslint/triple-slash-reference': ['error', { path: 'always' }],
      // A promise the closures above it read, assigned once the object they belong to exists.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // A listener's or a hook's own throw is passed on as it was thrown, whatever it is.
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingUnknown: true }],
      // `const { secret: _secret, ...rest } = x` is how a field is left out of a copy.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    files: ['src/**/*.ts', 'media/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 600 }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  {
    // Tests read JSON from the CLI, the monitor's API and Redis to assert on it: typing every such read would be noise
    // and would not make a test more able to fail. The promise rules stay on.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      // Manifests and YAML read as loose records, and bundles loaded with require() as the packaged code is.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-require-imports': 'off',
      // Assertion messages print whatever a test got, objects included.
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
    },
  },
  prettier,
);
