import type { Pool } from "@subdata/runtime";

/** What repositories need from a pool: tests wrap it to count or fail queries. */
export type Queryable = Pick<Pool, "query">;
