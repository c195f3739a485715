// autocannon ships no types; load-generator.ts declares the part of its result it reads.
declare module "autocannon";
