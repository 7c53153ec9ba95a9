/** One page of a listing: its items, and the token of the next page (none after the last). */
export interface Page<T> {
  items: T[];
  next: string | undefined;
}

/** Every item of a paged listing, page after page from the first (`page(undefined)`) until one names no next. */
export async function allPages<T>(page: (token: string | undefined) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  let token: string | undefined;
  do {
    const out = await page(token);
    items.push(...out.items);
    token = out.next;
  } while (token);
  return items;
}
