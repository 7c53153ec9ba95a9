/**
 * The state table's names, the one place the DynamoDB store and the CDK construct read them from. No imports: a
 * CDK app loads this file without loading the AWS SDK.
 *
 * State table schema. One item per state key:
 *
 * | attribute  | type | meaning                                                                 |
 * |------------|------|-------------------------------------------------------------------------|
 * | pk         | S    | state key: `o#<subject>` (ordered) or `u#<len>#<subject><identity>`     |
 * | status     | S    | running / done / released                                               |
 * | pos        | S    | position of the current or last claim ("" when unordered)               |
 * | eid        | S    | identity of the current or last claim                                   |
 * | fence      | N    | taken by each claim, above the old one; commit/renew/release check it   |
 * | leaseUntil | N    | epoch ms; present while running                                         |
 * | cpos, ceid | S    | position and identity of the last committed event                       |
 * | result     | S    | JSON result of the committed event, replayed to duplicates              |
 * | expiresAt  | N    | epoch seconds; the table's TTL attribute                                |
 * | tok        | S    | token of the claim that holds (or last held) the item                   |
 * | att        | N    | consecutive claims of the current identity; removed at commit           |
 * | resultOmitted | N | size of a committed result too large to store                           |
 * | cfp        | S    | payload fingerprint of the last committed event (opt-in)                |
 *
 * Only `pk` is a key (a string): the table needs no index. Billing on demand; TTL on `expiresAt`.
 */
export const STATE_KEY_ATTRIBUTE = "pk";
/** The state table's TTL attribute (epoch seconds). */
export const TTL_ATTRIBUTE = "expiresAt";
