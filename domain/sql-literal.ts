/**
 * The one way a value becomes part of ClickHouse SQL. ClickHouse 18.16 has no server-side query
 * parameters, so every value in a query is a literal rendered here; identifiers never are (they
 * come from allowlists). Anything this function cannot render exactly is refused rather than
 * approximated, so a query either means what the caller meant or is not sent at all.
 */
export type SqlScalar = string | number | bigint | boolean | Date;

// Latest second a ClickHouse DateTime (UInt32) can hold.
const MAX_DATETIME_SECONDS = 4_294_967_295;

export function sqlLiteral(value: SqlScalar): string {
  switch (typeof value) {
    case 'string':
      return quoteString(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`cannot render ${value} as a ClickHouse literal`);
      // Negative literals are parenthesised so that `a -1` style concatenations cannot form operators.
      return value < 0 ? `(${String(value)})` : String(value);
    case 'bigint':
      return value < 0n ? `(${value.toString()})` : value.toString();
    case 'boolean':
      return value ? '1' : '0';
    default:
      return dateTimeLiteral(value);
  }
}

function dateTimeLiteral(value: Date): string {
  const ms = value.getTime();
  if (!Number.isFinite(ms) || ms % 1000 !== 0) {
    throw new TypeError('a DateTime literal needs a valid date on a whole second');
  }
  const seconds = ms / 1000;
  if (seconds < 0 || seconds > MAX_DATETIME_SECONDS) throw new TypeError('date outside the ClickHouse DateTime range');
  // An epoch number is time-zone free, unlike the 'YYYY-MM-DD hh:mm:ss' text form, which the server
  // would read in its own time zone.
  return `toDateTime(${seconds})`;
}

function quoteString(text: string): string {
  let out = "'";
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    // Iterating by code point pairs surrogates up, so any surrogate seen here is unpaired and has
    // no UTF-8 form.
    if (code >= 0xd800 && code <= 0xdfff) throw new TypeError('string with an unpaired surrogate cannot be sent to ClickHouse');
    if (ch === '\\') out += '\\\\';
    else if (ch === "'") out += "\\'";
    // Control characters travel as \xHH so the query text stays printable and single-line.
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + "'";
}
