/**
 * Fixed-point arithmetic for money and usage. Quantities and costs are carried as integers of
 * nano-units (scale 9, the scale of the ClickHouse Decimal columns) and prices as pico-USD per unit
 * (scale 12, the scale of the PostgreSQL price column), so that sums are exact and an event's cost
 * is the same wherever it is computed.
 */
export const QUANTITY_SCALE = 9;
export const PRICE_SCALE = 12;

const DECIMAL_TEXT = /^(-?)(\d+)(?:\.(\d*))?$/;

/** Parses decimal text (as PostgreSQL numeric or ClickHouse Decimal prints it) into scaled units. */
export function parseScaled(text: string, scale: number): bigint {
  const match = DECIMAL_TEXT.exec(text.trim());
  if (!match) throw new TypeError(`not a decimal number: '${text}'`);
  const [, sign, whole, fraction = ''] = match;
  if (fraction.length > scale && /[1-9]/.test(fraction.slice(scale))) {
    throw new RangeError(`'${text}' has more than ${scale} decimal places`);
  }
  const digits = BigInt(whole + fraction.slice(0, scale).padEnd(scale, '0'));
  return sign === '-' ? -digits : digits;
}

/** Renders scaled units as plain decimal text with exactly `scale` decimals. */
export function formatScaled(value: bigint, scale: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const text = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
  return negative ? `-${text}` : text;
}

/**
 * A JSON quantity in nano-units. toFixed rounds the double's exact binary value half-up at the
 * ninth decimal, which is the precision the event is stored with.
 */
export function quantityToNano(quantity: number): bigint {
  if (!(quantity >= 0 && quantity < 1e21)) throw new RangeError(`quantity ${quantity} out of range`);
  // Below 1e21 toFixed writes plain digits, exactly nine after the point.
  return BigInt(quantity.toFixed(QUANTITY_SCALE).replace('.', ''));
}

/** Cost in nano-USD of a quantity at a price, rounded half up to the nano-dollar. */
export function costNano(quantityNano: bigint, pricePico: bigint): bigint {
  const divisor = 10n ** BigInt(PRICE_SCALE);
  return (quantityNano * pricePico + divisor / 2n) / divisor;
}

/**
 * Scaled units as a JSON number. Dividing an exact integer by a power of ten rounds once, to the
 * double nearest the decimal value, which prints back as that decimal (up to 15 significant digits).
 */
export function scaledToNumber(value: bigint, scale: number): number {
  return Number(value) / 10 ** scale;
}
