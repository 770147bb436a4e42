import { connectionInUseProblem } from '../../../../domain/integrations/connection-use';

describe('a connection in use', () => {
  test('nothing bound: it may be deleted', () => {
    expect(connectionInUseProblem('mail', [])).toBeUndefined();
  });

  test('the functions, then the models, that name it are listed', () => {
    const users = [
      { kind: 'models', name: 'gpt' },
      { kind: 'functions', name: 'send' },
      { kind: 'functions', name: 'read' },
    ];
    expect(connectionInUseProblem('mail', users)).toBe("integration connection 'mail' is used by function(s) 'send', 'read' and model(s) 'gpt': delete or rebind them first");
    expect(connectionInUseProblem('openai', [{ kind: 'models', name: 'gpt' }])).toBe("integration connection 'openai' is used by model(s) 'gpt': delete or rebind them first");
  });

  test('sandboxes pulling their image with it are listed last', () => {
    expect(connectionInUseProblem('registry', [{ kind: 'sandboxes', name: 'tools' }, { kind: 'functions', name: 'f' }])).toBe(
      "integration connection 'registry' is used by function(s) 'f' and sandbox(s) 'tools': delete or rebind them first",
    );
  });
});
