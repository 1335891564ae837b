// The API key and secret the bench server is started with and its clients and workers use.
// Kept apart from the server helper so peers that only connect do not load the server.
export const BENCH_API_KEY = "pk_bench";
export const BENCH_SECRET = "bench secret: long enough to sign user tokens with HS256";
