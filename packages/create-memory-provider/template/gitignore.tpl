node_modules/
dist/
