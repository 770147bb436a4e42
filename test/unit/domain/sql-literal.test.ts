import { sqlLiteral } from '../../../domain/sql-literal';

describe('sqlLiteral', () => {
  it('quotes plain strings', () => {
    expect(sqlLiteral('abc')).toBe("'abc'");
    expect(sqlLiteral('')).toBe("''");
  });

  it('escapes quotes and backslashes so the literal cannot be closed early', () => {
    expect(sqlLiteral("it's")).toBe("'it\\'s'");
    expect(sqlLiteral('a\\b')).toBe("'a\\\\b'");
    // A trailing backslash must not escape the closing quote.
    expect(sqlLiteral('x\\')).toBe("'x\\\\'");
    expect(sqlLiteral("\\'")).toBe("'\\\\\\''");
  });

  it('renders injection attempts as inert text', () => {
    const attack = "x' OR 1=1; DROP TABLE usage_events; --";
    const literal = sqlLiteral(attack);
    expect(literal).toBe("'x\\' OR 1=1; DROP TABLE usage_events; --'");
    // Every quote inside is escaped: only the outer two are bare.
    expect(literal.replace(/\\\\/g, '').replace(/\\'/g, '').split("'").length - 1).toBe(2);
  });

  it('writes NUL, newlines and other control characters as \\x escapes', () => {
    expect(sqlLiteral('a\u0000b')).toBe("'a\\x00b'");
    expect(sqlLiteral('line1\nline2\r\t')).toBe("'line1\\x0aline2\\x0d\\x09'");
    expect(sqlLiteral('\u007f')).toBe("'\\x7f'");
  });

  it('keeps unicode as is and refuses unpaired surrogates', () => {
    expect(sqlLiteral('héllo 世界 🚀')).toBe("'héllo 世界 🚀'");
    expect(() => sqlLiteral('bad \ud800 half')).toThrow(TypeError);
    expect(() => sqlLiteral('\udc00')).toThrow(TypeError);
  });

  it('renders numbers, bigints and booleans, refusing non-finite numbers', () => {
    expect(sqlLiteral(42)).toBe('42');
    expect(sqlLiteral(0.5)).toBe('0.5');
    expect(sqlLiteral(-3)).toBe('(-3)');
    expect(sqlLiteral(12345678901234567890n)).toBe('12345678901234567890');
    expect(sqlLiteral(-1n)).toBe('(-1)');
    expect(sqlLiteral(true)).toBe('1');
    expect(sqlLiteral(false)).toBe('0');
    expect(() => sqlLiteral(Number.NaN)).toThrow(TypeError);
    expect(() => sqlLiteral(Number.POSITIVE_INFINITY)).toThrow(TypeError);
  });

  it('renders dates as time-zone free epoch DateTimes on whole seconds only', () => {
    expect(sqlLiteral(new Date('2026-04-16T00:00:00Z'))).toBe(`toDateTime(${Date.UTC(2026, 3, 16) / 1000})`);
    expect(sqlLiteral(new Date(0))).toBe('toDateTime(0)');
    expect(() => sqlLiteral(new Date('2026-04-16T00:00:00.500Z'))).toThrow(TypeError);
    expect(() => sqlLiteral(new Date(Number.NaN))).toThrow(TypeError);
    expect(() => sqlLiteral(new Date(-1000))).toThrow(TypeError);
    expect(() => sqlLiteral(new Date(Date.UTC(2200, 0, 1)))).toThrow(TypeError);
  });
});
