export { scaffoldProvider, deriveProviderName, validateProviderName, type ScaffoldOptions, type ScaffoldResult } from "./scaffold.js";
