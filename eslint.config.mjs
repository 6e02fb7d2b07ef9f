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
    },
  },
  prettier,
);
