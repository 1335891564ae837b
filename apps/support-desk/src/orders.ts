import Database from "better-sqlite3";

/**
 * One order as the support desk stores it.
 *
 * @example
 * ```ts
 * const order: Order = { id: "A1001", customer: "u_ada", status: "shipped", detail: "arrives Thursday", items: 2 };
 * ```
 */
export interface Order {
  id: string;
  customer: string;
  status: "processing" | "shipped" | "delivered" | "cancelled";
  detail: string;
  items: number;
}

const SEED: Order[] = [
  {
    id: "A1001",
    customer: "u_ada",
    status: "shipped",
    detail: "it left the warehouse and arrives Thursday",
    items: 2,
  },
  { id: "A1002", customer: "u_ada", status: "processing", detail: "it is being packed today", items: 1 },
  { id: "B2001", customer: "u_grace", status: "delivered", detail: "it was delivered on Monday", items: 3 },
  {
    id: "C3001",
    customer: "u_linus",
    status: "cancelled",
    detail: "it was cancelled and refunded",
    items: 1,
  },
];

/**
 * The orders table in a SQLite file: created and seeded on first open.
 *
 * @example
 * ```ts
 * const orders = openOrders("./orders.sqlite");
 * orders.find("A1001")?.status; // "shipped"
 * ```
 */
export class Orders {
  readonly #db: Database.Database;

  constructor(file: string) {
    this.#db = new Database(file);
    this.#db.pragma("journal_mode = WAL");
    this.#db.exec(`CREATE TABLE IF NOT EXISTS orders (
      id TEXT PRIMARY KEY, customer TEXT NOT NULL, status TEXT NOT NULL, detail TEXT NOT NULL, items INTEGER NOT NULL
    )`);
    const insert = this.#db.prepare(
      "INSERT OR IGNORE INTO orders (id, customer, status, detail, items) VALUES (@id, @customer, @status, @detail, @items)",
    );
    this.#db.transaction((orders: Order[]) => {
      for (const order of orders) insert.run(order);
    })(SEED);
  }

  /** The order with this id, if there is one. Ids are matched case-insensitively. */
  find(id: string): Order | undefined {
    return this.#db.prepare("SELECT * FROM orders WHERE id = ? COLLATE NOCASE").get(id) as Order | undefined;
  }

  close(): void {
    this.#db.close();
  }
}

/**
 * Opens (and on first use creates and seeds) the orders table in `file`.
 *
 * @example
 * ```ts
 * const orders = openOrders(join(dataDir, "orders.sqlite"));
 * ```
 */
export function openOrders(file: string): Orders {
  return new Orders(file);
}
