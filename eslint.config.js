import js from "@eslint/js";
import tseslint from "typescript-eslint";

// Shipped source: every package's and provider's `src`, without tests, test support and fixtures.
const SHIPPED = ["packages/*/src/**/*.ts", "providers/*/src/**/*.ts"];
const NOT_SHIPPED = ["**/*.test.ts", "**/test-support/**", "**/__fixtures__/**", "**/*-data.ts"];

export default tseslint.config(
  { ignores: ["**/dist/**", "**/node_modules/**", "**/__fixtures__/**", "bench-results/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "off",
    },
  },
  {
    // A file a newcomer opens fits in their head; generated data (`*-data.ts`) is exempt.
    files: SHIPPED,
    ignores: NOT_SHIPPED,
    rules: {
      "max-lines": ["error", { max: 800, skipBlankLines: false, skipComments: false }],
      "max-lines-per-function": ["error", { max: 120, skipBlankLines: false, skipComments: false }],
    },
  },
);
