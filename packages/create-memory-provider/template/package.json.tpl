{
  "name": "{{packageName}}",
  "version": "0.1.0",
  "description": "{{description}}",
  "license": "MIT",
  "type": "module",
  "engines": { "node": ">=20" },
  "exports": {
    ".": { "types": "./dist/index.d.ts", "import": "./dist/index.js" },
    "./cli": { "types": "./dist/cli.d.ts", "import": "./dist/cli.js" },
    "./package.json": "./package.json"
  },
  "main": "./dist/index.js",
  "types": "./dist/index.d.ts",
  "files": ["dist", "!dist/**/*.test.*", "README.md"],
  "hermesMemoryProvider": {
    "name": "{{providerName}}",
    "entry": "./dist/index.js",
    "cli": "./dist/cli.js",
    "description": "{{description}}",
    "contract": { "capabilities": { "userScoping": true } }
  },
  "scripts": {
    "build": "tsc -p tsconfig.build.json",
    "test": "vitest run",
    "prepublishOnly": "npm run build && npm test"
  },
  "dependencies": {
    "@hermes/memory-provider-kit": "{{kitRange}}"
  },
  "peerDependencies": {
    "@hermes/memory-core": "{{coreRange}}"
  },
  "devDependencies": {
    "@hermes/memory-contract": "{{contractRange}}",
    "@hermes/memory-core": "{{coreRange}}",
    "@types/node": "20.19.43",
    "commander": "14.0.3",
    "typescript": "5.9.3",
    "vitest": "4.1.12"
  }
}
