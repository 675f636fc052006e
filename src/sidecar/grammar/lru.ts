// A bounded map in least-recently-used order: get() refreshes an entry; set() past the bound evicts the
// oldest and hands it to onEvict (compiled grammars are WebAssembly objects, freed explicitly).
export class Lru<K, V> {
  private readonly map = new Map<K, V>();
  constructor(
    private readonly max: number,
    private readonly onEvict: (value: V) => void = () => {},
  ) {}

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const v = this.map.get(key);
    if (v === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, v);
    return v;
  }

  set(key: K, value: V): void {
    const old = this.map.get(key);
    if (old !== undefined && old !== value) this.onEvict(old);
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.max) {
      const [k, v] = this.map.entries().next().value as [K, V];
      this.map.delete(k);
      this.onEvict(v);
    }
  }

  clear(): void {
    for (const v of this.map.values()) this.onEvict(v);
    this.map.clear();
  }
}
