import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { inflateRawSync } from "node:zlib";

/** DynamoDB Local's version, from the Maven metadata inside its jar (read with a minimal zip reader: no `unzip`). */
export function dynamoDBLocalVersion(): string {
  try {
    const require = createRequire(import.meta.url);
    const pkgDir = dirname(require.resolve("amplify-dynamodb-simulator/package.json"));
    const jar = readFileSync(join(pkgDir, "emulator", "DynamoDBLocal.jar"));
    const props = readZipEntry(jar, "META-INF/maven/com/amazonaws/DynamoDBLocal/pom.properties");
    const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as { version: string };
    const version = props ? (/version=(\S+)/.exec(props.toString("utf8"))?.[1] ?? "unknown") : "unknown";
    return `${version} (jar from amplify-dynamodb-simulator ${pkg.version})`;
  } catch {
    return "unknown";
  }
}

function readZipEntry(zip: Buffer, name: string): Buffer | undefined {
  // End of central directory: signature 0x06054b50 within the last 64 KiB.
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 65_557); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return undefined;
  const entries = zip.readUInt16LE(eocd + 10);
  let p = zip.readUInt32LE(eocd + 16);
  for (let n = 0; n < entries; n++) {
    if (zip.readUInt32LE(p) !== 0x02014b50) return undefined;
    const method = zip.readUInt16LE(p + 10);
    const compressedSize = zip.readUInt32LE(p + 20);
    const nameLength = zip.readUInt16LE(p + 28);
    const extraLength = zip.readUInt16LE(p + 30);
    const commentLength = zip.readUInt16LE(p + 32);
    const localOffset = zip.readUInt32LE(p + 42);
    if (zip.toString("utf8", p + 46, p + 46 + nameLength) === name) {
      const dataStart =
        localOffset + 30 + zip.readUInt16LE(localOffset + 26) + zip.readUInt16LE(localOffset + 28);
      const data = zip.subarray(dataStart, dataStart + compressedSize);
      return method === 0 ? data : inflateRawSync(data);
    }
    p += 46 + nameLength + extraLength + commentLength;
  }
  return undefined;
}
