/** GitHub's id for a heading. */
export function slug(heading: string): string;
/** The anchors of a Markdown page. */
export function anchors(markdown: string): Set<string>;
/** The relative link targets of a page (code left out). */
export function links(markdown: string): string[];
/** The broken relative links of `paths` (files or folders, relative to `base`): `file: link (why)` each. */
export function brokenLinks(paths?: string[], base?: string): string[];
