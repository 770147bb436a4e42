/**
 * A client mistake found by the pure billing logic. The HTTP layer turns it into a 400 whose
 * message names the parameter (or the event index and field) exactly.
 */
export class InvalidInput extends Error {
  constructor(
    /** Query parameter or event field at fault. */
    readonly parameter: string,
    message: string,
    /** Position of the faulty event in an ingestion request. */
    readonly index?: number,
  ) {
    super(message);
    this.name = 'InvalidInput';
  }
}
